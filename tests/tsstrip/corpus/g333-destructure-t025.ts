const [p]: Promise<void> | undefined[] = [10 as any]; const { q }: { q: Promise<void> | undefined } = { q: 11 as any }; return [p, q]
