const [p]: Partial<Record<string, unknown>>[] = [10 as any]; const { q }: { q: Partial<Record<string, unknown>> } = { q: 11 as any }; return [p, q]
