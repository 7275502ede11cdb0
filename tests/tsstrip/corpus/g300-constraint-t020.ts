function g<U extends readonly string[] = readonly string[]>(x: U) { return x } return g(9 as any)
