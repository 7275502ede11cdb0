const f = (a: unknown): unknown => a; return f(2 as any)
