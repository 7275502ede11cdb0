const m = new Map<string, <U>(x: U) => U>(); m.set("a", 8 as any); return [...m]
