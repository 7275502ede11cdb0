const f = <U,>(a: U): U => a; return f<new (x: number) => object>(3 as any)
