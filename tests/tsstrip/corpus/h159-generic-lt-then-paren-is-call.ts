const a = (x: number) => x, b = 0; return a<number>(b)
