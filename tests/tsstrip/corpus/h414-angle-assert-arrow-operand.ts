const f = <(x: number) => number>((x) => x + 1); return f(1)
