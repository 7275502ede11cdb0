const v = [1, 2] satisfies number | string | null; return v
