class C { x: number | string | null = 1 as any; m(a: number | string | null): number | string | null { return a } } return [new C().x, new C().m(4 as any)]
