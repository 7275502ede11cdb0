function f<T>(x: T) { return x } return f<{ a: number }>({ a: 1 })
