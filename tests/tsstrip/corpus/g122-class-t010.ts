class C { x: `prefix-${string}` = 1 as any; m(a: `prefix-${string}`): `prefix-${string}` { return a } } return [new C().x, new C().m(4 as any)]
