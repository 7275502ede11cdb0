const v = [1, 2] satisfies [first: number, second?: string]; return v
