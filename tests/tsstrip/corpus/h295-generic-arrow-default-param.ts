function f(x = <T,>(): number => 1) { return x() } return f()
