const m = new Map<string, ReturnType<typeof parseInt>>(); m.set("a", 8 as any); return [...m]
