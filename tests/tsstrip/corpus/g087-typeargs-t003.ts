const f = <U,>(a: U): U => a; return f<Map<string, Array<Set<number>>>>(3 as any)
