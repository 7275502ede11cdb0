class C { x: (a: number, b?: string) => void = 1 as any; m(a: (a: number, b?: string) => void): (a: number, b?: string) => void { return a } } return [new C().x, new C().m(4 as any)]
