const o = { a: 1 } satisfies Record<string, number>; return o
