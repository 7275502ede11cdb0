const o: { a?: number } = { a: 1 }; delete o!.a; return o
