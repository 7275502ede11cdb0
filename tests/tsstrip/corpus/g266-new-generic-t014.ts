const m = new Map<string, keyof typeof globalThis>(); m.set("a", 8 as any); return [...m]
