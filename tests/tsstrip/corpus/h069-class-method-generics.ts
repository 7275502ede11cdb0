class A { id<T>(x: T): T { return x } pair<T, U extends T>(a: T, b: U): [T, U] { return [a, b] } } const a = new A(); return [a.id<string>("s"), a.pair<number, 1>(2, 1)]
