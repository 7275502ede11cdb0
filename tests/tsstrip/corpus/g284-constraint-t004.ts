function g<U extends { a: number; b?: string } = { a: number; b?: string }>(x: U) { return x } return g(9 as any)
