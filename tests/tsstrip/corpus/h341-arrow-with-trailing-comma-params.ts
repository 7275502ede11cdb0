const f = (a: number, b: number,) => a + b; return f(1, 2,)
