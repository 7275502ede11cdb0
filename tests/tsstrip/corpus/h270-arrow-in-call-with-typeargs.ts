return [1, 2, 3].reduce<Record<string, number>>((acc, x) => { acc["k" + x] = x; return acc }, {})
