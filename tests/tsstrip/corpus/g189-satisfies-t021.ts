const v = [1, 2] satisfies unknown; return v
