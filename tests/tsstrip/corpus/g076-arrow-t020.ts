const f = (a: readonly string[]): readonly string[] => a; return f(2 as any)
