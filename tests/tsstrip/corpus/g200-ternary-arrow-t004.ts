const c = 1; const f = c ? (x: { a: number; b?: string }): { a: number; b?: string } => x : (y: any) => y; return f(5 as any)
