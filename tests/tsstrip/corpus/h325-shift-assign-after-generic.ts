let x = 16; x >>= 2; let y: Array<number>= [x]; return y
