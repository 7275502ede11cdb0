function f(a: object & { x: 1 }, b?: object & { x: 1 }): object & { x: 1 } { return [a, b] as any } return f(1 as any)
