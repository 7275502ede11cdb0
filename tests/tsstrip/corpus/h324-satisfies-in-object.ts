const o = { a: 1 satisfies number, b: [2] as const }; return o
