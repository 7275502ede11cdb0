function g<U extends (string | number)[] = (string | number)[]>(x: U) { return x } return g(9 as any)
