const o: { a?: { b?: number } } = { a: { b: 2 } }; return o.a!.b!
