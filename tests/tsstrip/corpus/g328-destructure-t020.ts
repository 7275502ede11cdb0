const [p]: readonly string[][] = [10 as any]; const { q }: { q: readonly string[] } = { q: 11 as any }; return [p, q]
