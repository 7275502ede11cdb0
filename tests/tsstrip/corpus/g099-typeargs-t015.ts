const f = <U,>(a: U): U => a; return f<ReturnType<typeof parseInt>>(3 as any)
