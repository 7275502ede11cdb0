function f(a: <U>(x: U) => U, b?: <U>(x: U) => U): <U>(x: U) => U { return [a, b] as any } return f(1 as any)
