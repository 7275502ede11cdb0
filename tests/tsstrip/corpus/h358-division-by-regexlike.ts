const a = 10, b = 2, g = 1; return a /b/ g
