const f = (x: number = 5 as number) => x; return f()
