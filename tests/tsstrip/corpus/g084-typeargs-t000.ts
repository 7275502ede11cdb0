const f = <U,>(a: U): U => a; return f<number>(3 as any)
