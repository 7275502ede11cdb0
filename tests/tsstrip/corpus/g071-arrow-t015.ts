const f = (a: ReturnType<typeof parseInt>): ReturnType<typeof parseInt> => a; return f(2 as any)
