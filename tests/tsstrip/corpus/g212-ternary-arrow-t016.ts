const c = 1; const f = c ? (x: { [K in "a" | "b"]: K }): { [K in "a" | "b"]: K } => x : (y: any) => y; return f(5 as any)
