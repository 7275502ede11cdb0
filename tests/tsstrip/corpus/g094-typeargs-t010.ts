const f = <U,>(a: U): U => a; return f<`prefix-${string}`>(3 as any)
