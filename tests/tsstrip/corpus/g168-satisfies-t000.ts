const v = [1, 2] satisfies number; return v
