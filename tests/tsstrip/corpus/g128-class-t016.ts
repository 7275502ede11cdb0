class C { x: { [K in "a" | "b"]: K } = 1 as any; m(a: { [K in "a" | "b"]: K }): { [K in "a" | "b"]: K } { return a } } return [new C().x, new C().m(4 as any)]
