const f = <U,>(a: U): U => a; return f<{ readonly [k: string]: number }>(3 as any)
