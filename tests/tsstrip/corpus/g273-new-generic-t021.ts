const m = new Map<string, unknown>(); m.set("a", 8 as any); return [...m]
