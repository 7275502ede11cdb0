function useState<T>(x: T): [T] { return [x] } return useState<number | null>(null)
