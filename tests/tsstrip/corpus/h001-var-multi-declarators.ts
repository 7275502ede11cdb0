let a: number = 1, b: string, c: number[] = [a]; return [a, b, c]
