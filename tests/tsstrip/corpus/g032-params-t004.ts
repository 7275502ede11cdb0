function f(a: { a: number; b?: string }, b?: { a: number; b?: string }): { a: number; b?: string } { return [a, b] as any } return f(1 as any)
