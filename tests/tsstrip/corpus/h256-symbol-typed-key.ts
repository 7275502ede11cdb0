const s: symbol = Symbol("k"); const o: { [k: symbol]: number } = { [s]: 1 }; return o[s]
