function f<T = string>(x?: T) { return x ?? "def" } return f()
