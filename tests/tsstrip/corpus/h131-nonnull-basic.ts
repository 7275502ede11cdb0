const m = new Map<string, number>([["a", 1]]); return m.get("a")! + 1
