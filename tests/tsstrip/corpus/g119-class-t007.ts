class C { x: [first: number, second?: string] = 1 as any; m(a: [first: number, second?: string]): [first: number, second?: string] { return a } } return [new C().x, new C().m(4 as any)]
