function as(as: number): number { return as + 1 } return as(as(1))
