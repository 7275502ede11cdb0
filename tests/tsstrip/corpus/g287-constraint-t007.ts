function g<U extends [first: number, second?: string] = [first: number, second?: string]>(x: U) { return x } return g(9 as any)
