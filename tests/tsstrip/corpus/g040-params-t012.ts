function f(a: new (x: number) => object, b?: new (x: number) => object): new (x: number) => object { return [a, b] as any } return f(1 as any)
