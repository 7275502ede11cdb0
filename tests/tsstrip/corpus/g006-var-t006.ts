let x: [number, string?, ...boolean[]] = 5 as any; return x
