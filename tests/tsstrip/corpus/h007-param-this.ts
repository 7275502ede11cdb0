function f(this: { v: number }, k: number): number { return this.v * k } return f.call({ v: 3 }, 2)
