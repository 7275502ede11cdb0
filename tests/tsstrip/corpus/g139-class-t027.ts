class C { x: () => () => void = 1 as any; m(a: () => () => void): () => () => void { return a } } return [new C().x, new C().m(4 as any)]
