const f = (a: typeof Math.max): typeof Math.max => a; return f(2 as any)
