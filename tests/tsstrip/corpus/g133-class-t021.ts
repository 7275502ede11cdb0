class C { x: unknown = 1 as any; m(a: unknown): unknown { return a } } return [new C().x, new C().m(4 as any)]
