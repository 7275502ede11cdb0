class C { x: "lit" | 'other' | 42 | -1 | true = 1 as any; m(a: "lit" | 'other' | 42 | -1 | true): "lit" | 'other' | 42 | -1 | true { return a } } return [new C().x, new C().m(4 as any)]
