function g<U extends Partial<Record<string, unknown>> = Partial<Record<string, unknown>>>(x: U) { return x } return g(9 as any)
