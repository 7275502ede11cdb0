const v = [1, 2] satisfies Partial<Record<string, unknown>>; return v
