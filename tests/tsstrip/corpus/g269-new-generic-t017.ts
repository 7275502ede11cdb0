const m = new Map<string, Partial<Record<string, unknown>>>(); m.set("a", 8 as any); return [...m]
