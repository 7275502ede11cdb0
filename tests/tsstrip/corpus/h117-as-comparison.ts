const a = 5; return a as number > 3
