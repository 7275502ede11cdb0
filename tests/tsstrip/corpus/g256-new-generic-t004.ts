const m = new Map<string, { a: number; b?: string }>(); m.set("a", 8 as any); return [...m]
