const f = <U,>(a: U): U => a; return f<any[][]>(3 as any)
