function g<U extends `prefix-${string}` = `prefix-${string}`>(x: U) { return x } return g(9 as any)
