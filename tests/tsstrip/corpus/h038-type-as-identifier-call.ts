const type = (x: number) => x * 2; return type(4)
