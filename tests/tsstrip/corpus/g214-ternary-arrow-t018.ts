const c = 1; const f = c ? (x: object & { x: 1 }): object & { x: 1 } => x : (y: any) => y; return f(5 as any)
