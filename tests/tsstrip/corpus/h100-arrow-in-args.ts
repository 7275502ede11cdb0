return [3, 1, 2].sort((a: number, b: number): number => a - b)
