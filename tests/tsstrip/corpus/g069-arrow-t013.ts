const f = (a: <U>(x: U) => U): <U>(x: U) => U => a; return f(2 as any)
