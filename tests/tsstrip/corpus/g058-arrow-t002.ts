const f = (a: Array<number>): Array<number> => a; return f(2 as any)
