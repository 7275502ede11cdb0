return (7 as { [K in "a" | "b"]: K }) as any
