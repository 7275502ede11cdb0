function g<U extends number | string | null = number | string | null>(x: U) { return x } return g(9 as any)
