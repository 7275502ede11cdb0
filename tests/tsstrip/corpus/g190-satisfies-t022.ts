const v = [1, 2] satisfies any[][]; return v
