const f = <U,>(a: U): U => a; return f<number | string | null>(3 as any)
