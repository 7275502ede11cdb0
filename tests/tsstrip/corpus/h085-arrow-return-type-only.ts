const f = (): number => 1; return f()
