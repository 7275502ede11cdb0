const f = (x: number) => x > 0 ? (y: number): number => y + x : (y: number) => y; return f(1)(2)
