const f = <U,>(a: U): U => a; return f<() => () => void>(3 as any)
