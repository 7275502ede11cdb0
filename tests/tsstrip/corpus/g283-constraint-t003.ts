function g<U extends Map<string, Array<Set<number>>> = Map<string, Array<Set<number>>>>(x: U) { return x } return g(9 as any)
