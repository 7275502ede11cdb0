const a: any = 1, b = 2, c = 3; return [<number>a < b, b > <number>a, a < b > c]
