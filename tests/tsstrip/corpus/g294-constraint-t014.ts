function g<U extends keyof typeof globalThis = keyof typeof globalThis>(x: U) { return x } return g(9 as any)
