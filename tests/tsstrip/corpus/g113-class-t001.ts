class C { x: string[] = 1 as any; m(a: string[]): string[] { return a } } return [new C().x, new C().m(4 as any)]
