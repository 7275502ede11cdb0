const a = 1, b = 2, c = 0; return (a) < (b) && (b) > (c)
