const f = <U,>(a: U): U => a; return f<keyof typeof globalThis>(3 as any)
