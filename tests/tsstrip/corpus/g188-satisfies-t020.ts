const v = [1, 2] satisfies readonly string[]; return v
