function g<U extends Promise<void> | undefined = Promise<void> | undefined>(x: U) { return x } return g(9 as any)
