const a = 1, b = 2, c = 3, d = 4; const f = (...x: any[]) => x; return f(a < b, c > d)
