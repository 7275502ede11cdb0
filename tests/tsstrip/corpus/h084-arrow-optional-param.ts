const f = (a?: number) => a; return [f(), f(2)]
