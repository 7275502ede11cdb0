const m = new Map<string, object & { x: 1 }>(); m.set("a", 8 as any); return [...m]
