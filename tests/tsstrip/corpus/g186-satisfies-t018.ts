const v = [1, 2] satisfies object & { x: 1 }; return v
