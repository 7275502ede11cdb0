const f = (a: number, b?: number): number => a + (b ?? 1); return f(1)
