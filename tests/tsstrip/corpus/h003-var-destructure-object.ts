const { a, b: bb = 2 }: { a: number; b?: number } = { a: 1 }; return a + bb
