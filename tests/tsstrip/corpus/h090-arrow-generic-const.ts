const f = <const T,>(x: T): T => x; return f(["a", "b"])
