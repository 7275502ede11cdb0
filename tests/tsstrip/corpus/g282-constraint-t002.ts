function g<U extends Array<number> = Array<number>>(x: U) { return x } return g(9 as any)
