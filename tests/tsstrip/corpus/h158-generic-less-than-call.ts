const a = 1, b = 2; const f = (x: number) => x; return a < f(b)
