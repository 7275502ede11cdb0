const m = new Map<string, { [K in "a" | "b"]: K }>(); m.set("a", 8 as any); return [...m]
