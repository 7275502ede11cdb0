function f<T>(x: T): T { return x } return f<number>(3) < 4
