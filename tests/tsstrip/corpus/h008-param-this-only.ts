function f(this: { v: number }) { return this.v } return f.call({ v: 7 })
