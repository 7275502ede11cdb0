const a = 1, b = 0; const f = a ? b ? (x: number): number => 1 : (x: number): number => 2 : (x: number) => 3; return f(0)
