let x: number | undefined; x! = 1; return x
