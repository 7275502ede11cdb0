const m = new Map<string, [number, string?, ...boolean[]]>(); m.set("a", 8 as any); return [...m]
