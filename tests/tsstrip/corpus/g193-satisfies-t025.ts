const v = [1, 2] satisfies Promise<void> | undefined; return v
