let x: <U>(x: U) => U = 5 as any; return x
