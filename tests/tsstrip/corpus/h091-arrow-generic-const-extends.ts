const f = <const T extends readonly unknown[]>(x: T) => x.length; return f([1, 2, 3])
