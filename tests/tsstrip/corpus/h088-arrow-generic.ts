const id = <T,>(x: T): T => x; return id<number>(3)
