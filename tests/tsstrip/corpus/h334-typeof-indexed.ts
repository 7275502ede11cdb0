const y = [1, 2]; let x: typeof y[number] = 3; return x
