function g<U extends <U>(x: U) => U = <U>(x: U) => U>(x: U) { return x } return g(9 as any)
