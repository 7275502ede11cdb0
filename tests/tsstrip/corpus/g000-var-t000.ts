let x: number = 5 as any; return x
