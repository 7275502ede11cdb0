function f(a: Array<number>, b?: Array<number>): Array<number> { return [a, b] as any } return f(1 as any)
