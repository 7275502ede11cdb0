const m = new Map<string, Array<Set<number>>>(); m.set("a", [new Set([1])]); return m.get("a")![0].size
