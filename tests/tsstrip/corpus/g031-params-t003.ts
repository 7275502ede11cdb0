function f(a: Map<string, Array<Set<number>>>, b?: Map<string, Array<Set<number>>>): Map<string, Array<Set<number>>> { return [a, b] as any } return f(1 as any)
