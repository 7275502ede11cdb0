const m = new Map<string, new (x: number) => object>(); m.set("a", 8 as any); return [...m]
