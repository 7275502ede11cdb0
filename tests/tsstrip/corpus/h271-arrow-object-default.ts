const f = ({ a }: { a: number } = { a: 1 }) => a; return f()
