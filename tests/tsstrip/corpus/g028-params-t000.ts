function f(a: number, b?: number): number { return [a, b] as any } return f(1 as any)
