const cfg = { a: 1, b: 2 }; type K = keyof typeof cfg; const k: K = "a"; return cfg[k]
