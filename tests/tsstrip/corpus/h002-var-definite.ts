let x!: number; x = 3; return x
