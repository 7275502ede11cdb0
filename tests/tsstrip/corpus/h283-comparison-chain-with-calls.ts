const f = (x: number) => x; const a = 1, b = 2; return f(a) < f(b) && f(b) > f(a)
