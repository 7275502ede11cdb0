const f = <T extends { n: number }>(x: T): number => x.n; return f({ n: 5 })
