class S<T> { map = <U,>(f: (x: T) => U): S<U> => new S<U>() } return new S<number>().map((x) => x) instanceof S
