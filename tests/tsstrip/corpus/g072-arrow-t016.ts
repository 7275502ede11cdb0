const f = (a: { [K in "a" | "b"]: K }): { [K in "a" | "b"]: K } => a; return f(2 as any)
