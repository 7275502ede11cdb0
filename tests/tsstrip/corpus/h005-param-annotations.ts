function f(a: number, b: string = "x", ...rest: number[]): string { return a + b + rest.length } return f(1, "y", 3, 4)
