const v = [1, 2] satisfies string[]; return v
