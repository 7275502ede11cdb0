let x: () => () => void = 5 as any; return x
