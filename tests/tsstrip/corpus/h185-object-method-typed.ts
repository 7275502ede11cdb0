const o = { m<T>(x: T): T { return x }, n(a: number, b?: number): number { return a } }; return [o.m("s"), o.n(1)]
