function p<A, B>(a: A, b: B): [A, B] { return [a, b] } return p<number, string[]>(1, ["x"])
