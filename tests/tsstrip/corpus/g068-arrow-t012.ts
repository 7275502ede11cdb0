const f = (a: new (x: number) => object): new (x: number) => object => a; return f(2 as any)
