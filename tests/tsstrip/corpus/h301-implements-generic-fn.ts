interface Foo<T> {} class A implements Foo<(a: number) => void> { v = 1 } return new A().v
