const v = [1, 2] satisfies `prefix-${string}`; return v
