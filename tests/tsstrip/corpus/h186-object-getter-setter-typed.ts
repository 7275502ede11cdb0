const o = { _v: 1, get v(): number { return this._v }, set v(x: number) { this._v = x } }; o.v = 5; return o.v
