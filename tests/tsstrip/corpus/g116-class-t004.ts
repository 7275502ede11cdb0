class C { x: { a: number; b?: string } = 1 as any; m(a: { a: number; b?: string }): { a: number; b?: string } { return a } } return [new C().x, new C().m(4 as any)]
