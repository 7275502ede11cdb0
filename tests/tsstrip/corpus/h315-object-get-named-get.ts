const o = { get get() { return 1 }, async async() { return 2 }, set(x: number) { return x } }; return [o.get, await o.async(), o.set(3)]
