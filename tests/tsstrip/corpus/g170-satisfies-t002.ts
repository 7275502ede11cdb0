const v = [1, 2] satisfies Array<number>; return v
