const m = new Map<string, string[]>(); m.set("a", 8 as any); return [...m]
