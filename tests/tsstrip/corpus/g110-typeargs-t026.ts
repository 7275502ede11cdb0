const f = <U,>(a: U): U => a; return f<typeof Math.max>(3 as any)
