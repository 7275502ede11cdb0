const m = new Map<string, Array<number>>(); m.set("a", 8 as any); return [...m]
