const f = <U,>(a: U): U => a; return f<(string | number)[]>(3 as any)
