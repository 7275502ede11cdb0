let x: object & { x: 1 } = 5 as any; return x
