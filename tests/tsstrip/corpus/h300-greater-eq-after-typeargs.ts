const m = new Map<string, number>(); const n = 5; return n >= 3 && m.size >= 0
