const c = true; const f = c ? (x: number): number => x + 1 : (x: number) => x; return f(1)
