const m = new Map<string, () => () => void>(); m.set("a", 8 as any); return [...m]
