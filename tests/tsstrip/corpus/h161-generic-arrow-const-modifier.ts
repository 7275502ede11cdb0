function f<const T extends readonly string[]>(x: T): T { return x } return f(["a"])
