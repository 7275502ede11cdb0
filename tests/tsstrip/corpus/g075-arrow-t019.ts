const f = (a: (string | number)[]): (string | number)[] => a; return f(2 as any)
