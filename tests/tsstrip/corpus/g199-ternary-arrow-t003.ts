const c = 1; const f = c ? (x: Map<string, Array<Set<number>>>): Map<string, Array<Set<number>>> => x : (y: any) => y; return f(5 as any)
