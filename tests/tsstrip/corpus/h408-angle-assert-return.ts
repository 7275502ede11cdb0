function f(v: unknown) { return <number>v } return f(3)
