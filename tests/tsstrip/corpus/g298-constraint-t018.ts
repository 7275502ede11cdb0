function g<U extends object & { x: 1 } = object & { x: 1 }>(x: U) { return x } return g(9 as any)
