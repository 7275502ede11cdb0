const m = new Map<string, [first: number, second?: string]>(); m.set("a", 8 as any); return [...m]
