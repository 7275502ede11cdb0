function id<T>(x: T) { return x } const idn = id<number>; return idn(4)
