const o = { get(k: string): string { return k }, set(k: string, v: number): number { return v } }; return [o.get("a"), o.set("b", 2)]
