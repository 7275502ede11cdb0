let a: number, b: number; ({ a, b = 5 } = { a: 1 } as any); return [a, b]
