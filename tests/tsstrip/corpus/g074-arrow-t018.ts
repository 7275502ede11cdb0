const f = (a: object & { x: 1 }): object & { x: 1 } => a; return f(2 as any)
