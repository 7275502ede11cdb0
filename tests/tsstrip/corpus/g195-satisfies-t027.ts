const v = [1, 2] satisfies () => () => void; return v
