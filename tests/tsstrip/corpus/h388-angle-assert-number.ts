const x: unknown = 41; return <number>x + 1
