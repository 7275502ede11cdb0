const f = <U,>(a: U): U => a; return f<Partial<Record<string, unknown>>>(3 as any)
