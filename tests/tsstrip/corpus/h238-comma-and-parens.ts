let a = 0; const r = (a++, a as number, a + 1); return [a, r]
