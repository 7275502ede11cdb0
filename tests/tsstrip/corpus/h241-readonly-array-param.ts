function f(xs: readonly number[]): number { return xs.length } return f([1, 2])
