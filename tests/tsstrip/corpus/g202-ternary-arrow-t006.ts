const c = 1; const f = c ? (x: [number, string?, ...boolean[]]): [number, string?, ...boolean[]] => x : (y: any) => y; return f(5 as any)
