const m = new Map<string, Map<string, Array<Set<number>>>>(); m.set("a", 8 as any); return [...m]
