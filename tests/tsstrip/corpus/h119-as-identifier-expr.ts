const as = 2; const y = as as number; return as * y
