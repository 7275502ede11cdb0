const f = <T = unknown>(x: T) => x; return f(3)
