const v = [1, 2] satisfies ReturnType<typeof parseInt>; return v
