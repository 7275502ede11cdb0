class C { x: (string | number)[] = 1 as any; m(a: (string | number)[]): (string | number)[] { return a } } return [new C().x, new C().m(4 as any)]
