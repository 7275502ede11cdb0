function f(a: string[], b?: string[]): string[] { return [a, b] as any } return f(1 as any)
