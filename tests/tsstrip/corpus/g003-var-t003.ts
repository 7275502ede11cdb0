let x: Map<string, Array<Set<number>>> = 5 as any; return x
