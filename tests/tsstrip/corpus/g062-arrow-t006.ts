const f = (a: [number, string?, ...boolean[]]): [number, string?, ...boolean[]] => a; return f(2 as any)
