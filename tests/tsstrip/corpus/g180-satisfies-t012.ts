const v = [1, 2] satisfies new (x: number) => object; return v
