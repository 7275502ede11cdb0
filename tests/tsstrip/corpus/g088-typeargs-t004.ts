const f = <U,>(a: U): U => a; return f<{ a: number; b?: string }>(3 as any)
