function g<U extends string[] = string[]>(x: U) { return x } return g(9 as any)
