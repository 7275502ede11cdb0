const [p]: typeof Math.max[] = [10 as any]; const { q }: { q: typeof Math.max } = { q: 11 as any }; return [p, q]
