let x: Array<number> = 5 as any; return x
