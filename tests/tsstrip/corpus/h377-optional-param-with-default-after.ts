function f(a?: number, b: number = 2) { return [a, b] } return f()
