const n: number = 1_000_000; return n
