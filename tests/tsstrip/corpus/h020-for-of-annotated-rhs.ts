let s = 0; for (const x of [1, 2, 3] as number[]) s += x; return s
