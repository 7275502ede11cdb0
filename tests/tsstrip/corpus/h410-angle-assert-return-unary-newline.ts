function f(v: any) { return -<number>
    v } return f(3)
