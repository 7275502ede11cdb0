let x: { [K in "a" | "b"]: K } = 5 as any; return x
