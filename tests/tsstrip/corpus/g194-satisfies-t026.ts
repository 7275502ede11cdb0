const v = [1, 2] satisfies typeof Math.max; return v
