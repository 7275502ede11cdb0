const v = [1, 2] satisfies (string | number)[]; return v
