function f({ a, b }: { a: number; b: number }, [c]: [number]): number { return a + b + c } return f({ a: 1, b: 2 }, [3])
