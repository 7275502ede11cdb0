const [p, , q = 5]: number[] = [1, 2]; return [p, q]
