const f = (a: number) => ({ a, b: a as number, c: <T,>(x: T): T => x }); return f(1).c(2)
