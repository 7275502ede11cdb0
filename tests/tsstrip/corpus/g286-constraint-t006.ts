function g<U extends [number, string?, ...boolean[]] = [number, string?, ...boolean[]]>(x: U) { return x } return g(9 as any)
