function f(a: readonly string[], b?: readonly string[]): readonly string[] { return [a, b] as any } return f(1 as any)
