const x: number = 1; return [x != 2, x !== 1, x! == 1]
