const m = new Map<string, (string | number)[]>(); m.set("a", 8 as any); return [...m]
