function g<U extends (a: number, b?: string) => void = (a: number, b?: string) => void>(x: U) { return x } return g(9 as any)
