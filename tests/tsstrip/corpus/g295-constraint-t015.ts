function g<U extends ReturnType<typeof parseInt> = ReturnType<typeof parseInt>>(x: U) { return x } return g(9 as any)
