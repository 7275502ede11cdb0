let a = 8; a /= 2; return a
