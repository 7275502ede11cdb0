class Box<T> { v: T[] = [] } const b = new Box<string>; return b.v
