const a = 8; return (a) / 2 / (1)
