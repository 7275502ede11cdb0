function f<T>(...xs: T[]): number { return xs.length } return f<number>(...[1, 2])
