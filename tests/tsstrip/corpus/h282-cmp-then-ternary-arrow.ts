const a = 1, b = 2; const f = a < b ? (c: number): number => c * 2 : (d: number) => d; return f(3)
