let x: { a: number; b?: string } = 5 as any; return x
