const a = 8, g = 2, i = 1; return a / 2 / g / i
