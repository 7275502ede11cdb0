return ((x: number): number => x * 3)(3)
