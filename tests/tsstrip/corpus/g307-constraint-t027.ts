function g<U extends () => () => void = () => () => void>(x: U) { return x } return g(9 as any)
