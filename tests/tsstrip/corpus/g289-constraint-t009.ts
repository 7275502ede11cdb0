function g<U extends "lit" | 'other' | 42 | -1 | true = "lit" | 'other' | 42 | -1 | true>(x: U) { return x } return g(9 as any)
