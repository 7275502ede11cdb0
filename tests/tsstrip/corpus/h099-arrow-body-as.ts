const f = (x: unknown) => x as number; return f(3)
