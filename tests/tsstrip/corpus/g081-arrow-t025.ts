const f = (a: Promise<void> | undefined): Promise<void> | undefined => a; return f(2 as any)
