const c = 1; const f = c ? (x: unknown): unknown => x : (y: any) => y; return f(5 as any)
