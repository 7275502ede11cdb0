class C { x: Array<number> = 1 as any; m(a: Array<number>): Array<number> { return a } } return [new C().x, new C().m(4 as any)]
