const [p]: (string | number)[][] = [10 as any]; const { q }: { q: (string | number)[] } = { q: 11 as any }; return [p, q]
