class A<T> {} return new A<number>() instanceof A
