const a: number[] | null = [5]; return a![0]
