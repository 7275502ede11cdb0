const a = 2, b = 3; return a + b as number
