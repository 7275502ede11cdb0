function g<U extends typeof Math.max = typeof Math.max>(x: U) { return x } return g(9 as any)
