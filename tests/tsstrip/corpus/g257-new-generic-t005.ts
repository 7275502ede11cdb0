const m = new Map<string, { readonly [k: string]: number }>(); m.set("a", 8 as any); return [...m]
