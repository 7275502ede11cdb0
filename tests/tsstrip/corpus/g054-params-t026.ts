function f(a: typeof Math.max, b?: typeof Math.max): typeof Math.max { return [a, b] as any } return f(1 as any)
