const f = <U,>(a: U): U => a; return f<(a: number, b?: string) => void>(3 as any)
