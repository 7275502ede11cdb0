interface A<T> { a: T }
interface B<T, U = string> extends A<T>, Iterable<U> { b: U }
const b: B<number> = { a: 1, b: "x" } as any; return b
