const m = new Map<string, number | string | null>(); m.set("a", 8 as any); return [...m]
