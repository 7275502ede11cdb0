function f<T>(x: T) { return 6 } return f<number>(1) / 2
