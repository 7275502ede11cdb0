class C { x: object & { x: 1 } = 1 as any; m(a: object & { x: 1 }): object & { x: 1 } { return a } } return [new C().x, new C().m(4 as any)]
