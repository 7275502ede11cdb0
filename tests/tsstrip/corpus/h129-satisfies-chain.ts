const v = [1, 2] satisfies number[] as readonly number[]; return v
