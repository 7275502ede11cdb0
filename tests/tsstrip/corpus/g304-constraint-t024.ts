function g<U extends import("./mod").T<string> = import("./mod").T<string>>(x: U) { return x } return g(9 as any)
