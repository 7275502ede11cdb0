function f(): { a: number; b: { c: string } } { return { a: 1, b: { c: "x" } } } return f()
