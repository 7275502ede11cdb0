const m = new Map<string, `prefix-${string}`>(); m.set("a", 8 as any); return [...m]
