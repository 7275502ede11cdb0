function g<U extends { [K in "a" | "b"]: K } = { [K in "a" | "b"]: K }>(x: U) { return x } return g(9 as any)
