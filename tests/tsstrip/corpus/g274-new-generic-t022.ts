const m = new Map<string, any[][]>(); m.set("a", 8 as any); return [...m]
