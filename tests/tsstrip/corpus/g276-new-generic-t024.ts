const m = new Map<string, import("./mod").T<string>>(); m.set("a", 8 as any); return [...m]
