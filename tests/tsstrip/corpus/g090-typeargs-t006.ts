const f = <U,>(a: U): U => a; return f<[number, string?, ...boolean[]]>(3 as any)
