function id<T>(x: T): T { return x } const c = true; return c ? id<number>(1) : id<string>("s")
