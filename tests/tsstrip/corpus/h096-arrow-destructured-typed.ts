const f = ({ a, b = 2 }: { a: number; b?: number }, [c]: number[] = [3]): number => a + b + c; return f({ a: 1 })
