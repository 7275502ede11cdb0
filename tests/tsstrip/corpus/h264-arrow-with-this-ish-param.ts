const f = (self: { n: number }): number => self.n; return f({ n: 4 })
