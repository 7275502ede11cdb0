function f(a: [first: number, second?: string], b?: [first: number, second?: string]): [first: number, second?: string] { return [a, b] as any } return f(1 as any)
