let s = ""; for (const [k, v] of Object.entries({ a: 1 }) as [string, number][]) s += k + v; return s
