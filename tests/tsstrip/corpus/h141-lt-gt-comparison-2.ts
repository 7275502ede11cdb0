const a = 3, b = 2, c = 1; return [a < b, b > c, a < b == b > c]
