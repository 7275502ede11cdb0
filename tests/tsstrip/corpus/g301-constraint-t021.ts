function g<U extends unknown = unknown>(x: U) { return x } return g(9 as any)
