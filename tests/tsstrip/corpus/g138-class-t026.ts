class C { x: typeof Math.max = 1 as any; m(a: typeof Math.max): typeof Math.max { return a } } return [new C().x, new C().m(4 as any)]
