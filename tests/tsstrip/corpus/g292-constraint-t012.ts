function g<U extends new (x: number) => object = new (x: number) => object>(x: U) { return x } return g(9 as any)
