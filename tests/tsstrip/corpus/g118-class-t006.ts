class C { x: [number, string?, ...boolean[]] = 1 as any; m(a: [number, string?, ...boolean[]]): [number, string?, ...boolean[]] { return a } } return [new C().x, new C().m(4 as any)]
