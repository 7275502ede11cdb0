const f = <U,>(a: U): U => a; return f<"lit" | 'other' | 42 | -1 | true>(3 as any)
