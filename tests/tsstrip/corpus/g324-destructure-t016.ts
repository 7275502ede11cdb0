const [p]: { [K in "a" | "b"]: K }[] = [10 as any]; const { q }: { q: { [K in "a" | "b"]: K } } = { q: 11 as any }; return [p, q]
