const c = 1; const f = c ? (x: readonly string[]): readonly string[] => x : (y: any) => y; return f(5 as any)
