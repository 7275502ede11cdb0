class C { x: Map<string, Array<Set<number>>> = 1 as any; m(a: Map<string, Array<Set<number>>>): Map<string, Array<Set<number>>> { return a } } return [new C().x, new C().m(4 as any)]
