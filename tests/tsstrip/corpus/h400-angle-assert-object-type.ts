const o: unknown = { a: 5 }; return (<{ a: number }>o).a
