let s = 0; for (let i: number = 0; i < 4; i++) s += i; return s
