let a = 4; const b = a++ / 2; return [a, b]
