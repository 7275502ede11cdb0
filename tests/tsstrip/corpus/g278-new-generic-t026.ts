const m = new Map<string, typeof Math.max>(); m.set("a", 8 as any); return [...m]
