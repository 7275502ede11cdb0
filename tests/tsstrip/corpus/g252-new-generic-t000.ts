const m = new Map<string, number>(); m.set("a", 8 as any); return [...m]
