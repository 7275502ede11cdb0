function g<U extends number = number>(x: U) { return x } return g(9 as any)
