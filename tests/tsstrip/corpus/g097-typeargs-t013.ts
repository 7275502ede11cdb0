const f = <U,>(a: U): U => a; return f<<U>(x: U) => U>(3 as any)
