const [p]: unknown[] = [10 as any]; const { q }: { q: unknown } = { q: 11 as any }; return [p, q]
