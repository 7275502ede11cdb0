function f(a: unknown, b?: unknown): unknown { return [a, b] as any } return f(1 as any)
