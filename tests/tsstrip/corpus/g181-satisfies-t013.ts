const v = [1, 2] satisfies <U>(x: U) => U; return v
