const a = 1, b = 2; const r = (a, b); return r
