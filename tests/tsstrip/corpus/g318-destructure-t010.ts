const [p]: `prefix-${string}`[] = [10 as any]; const { q }: { q: `prefix-${string}` } = { q: 11 as any }; return [p, q]
