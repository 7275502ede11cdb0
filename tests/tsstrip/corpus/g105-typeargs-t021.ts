const f = <U,>(a: U): U => a; return f<unknown>(3 as any)
