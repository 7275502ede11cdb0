class C { x: number = 1 as any; m(a: number): number { return a } } return [new C().x, new C().m(4 as any)]
