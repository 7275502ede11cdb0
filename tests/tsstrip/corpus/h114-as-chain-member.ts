const o: unknown = { a: { b: 2 } }; return (o as { a: { b: number } }).a.b
