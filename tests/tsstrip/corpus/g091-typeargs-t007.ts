const f = <U,>(a: U): U => a; return f<[first: number, second?: string]>(3 as any)
