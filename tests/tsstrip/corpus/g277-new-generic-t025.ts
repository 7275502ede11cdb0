const m = new Map<string, Promise<void> | undefined>(); m.set("a", 8 as any); return [...m]
