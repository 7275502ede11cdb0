const f = (a: { a: number; b?: string }): { a: number; b?: string } => a; return f(2 as any)
