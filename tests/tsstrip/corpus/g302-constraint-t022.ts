function g<U extends any[][] = any[][]>(x: U) { return x } return g(9 as any)
