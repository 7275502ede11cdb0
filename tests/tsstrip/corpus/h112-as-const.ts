const t = [1, "a"] as const; const o = { k: "v" } as const; return [t, o]
