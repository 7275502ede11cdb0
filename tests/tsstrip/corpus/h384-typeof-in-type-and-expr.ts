const x = 1; let t: typeof x = 2; return typeof t
