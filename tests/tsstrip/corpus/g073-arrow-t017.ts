const f = (a: Partial<Record<string, unknown>>): Partial<Record<string, unknown>> => a; return f(2 as any)
