const o: { m?<T>(x: T): T } = { m: (x) => x }; return o.m?.<number>(3)
