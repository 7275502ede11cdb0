const f = <U,>(a: U): U => a; return f<object & { x: 1 }>(3 as any)
