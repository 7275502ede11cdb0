const a: number | null = 1; return Math.abs(a!)
