function f(a: ReturnType<typeof parseInt>, b?: ReturnType<typeof parseInt>): ReturnType<typeof parseInt> { return [a, b] as any } return f(1 as any)
