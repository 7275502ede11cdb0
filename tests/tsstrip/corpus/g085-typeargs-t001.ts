const f = <U,>(a: U): U => a; return f<string[]>(3 as any)
