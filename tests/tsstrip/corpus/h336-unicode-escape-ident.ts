const \u0061b: number = 1; return ab
