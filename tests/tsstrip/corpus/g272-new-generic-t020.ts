const m = new Map<string, readonly string[]>(); m.set("a", 8 as any); return [...m]
