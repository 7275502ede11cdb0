class C { x: Partial<Record<string, unknown>> = 1 as any; m(a: Partial<Record<string, unknown>>): Partial<Record<string, unknown>> { return a } } return [new C().x, new C().m(4 as any)]
