function f(a?: number, b?: string) { return [a, b] } return f()
