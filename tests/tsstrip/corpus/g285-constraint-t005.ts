function g<U extends { readonly [k: string]: number } = { readonly [k: string]: number }>(x: U) { return x } return g(9 as any)
