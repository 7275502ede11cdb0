const m = new Map<string, "lit" | 'other' | 42 | -1 | true>(); m.set("a", 8 as any); return [...m]
