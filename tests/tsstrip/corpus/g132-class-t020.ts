class C { x: readonly string[] = 1 as any; m(a: readonly string[]): readonly string[] { return a } } return [new C().x, new C().m(4 as any)]
