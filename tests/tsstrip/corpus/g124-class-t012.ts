class C { x: new (x: number) => object = 1 as any; m(a: new (x: number) => object): new (x: number) => object { return a } } return [new C().x, new C().m(4 as any)]
