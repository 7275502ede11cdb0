const f = (a: number): number => a; return f(2 as any)
