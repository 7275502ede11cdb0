const f = <U,>(a: U): U => a; return f<Promise<void> | undefined>(3 as any)
