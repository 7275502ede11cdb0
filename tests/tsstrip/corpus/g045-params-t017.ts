function f(a: Partial<Record<string, unknown>>, b?: Partial<Record<string, unknown>>): Partial<Record<string, unknown>> { return [a, b] as any } return f(1 as any)
