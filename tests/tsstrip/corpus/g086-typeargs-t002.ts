const f = <U,>(a: U): U => a; return f<Array<number>>(3 as any)
