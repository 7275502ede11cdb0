const f = (...xs: number[]): number => xs.length; return f(1, 2, 3)
