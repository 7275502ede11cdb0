const f = <U,>(a: U): U => a; return f<readonly string[]>(3 as any)
