const f = (a: Map<string, Array<Set<number>>>): Map<string, Array<Set<number>>> => a; return f(2 as any)
