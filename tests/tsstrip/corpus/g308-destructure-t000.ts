const [p]: number[] = [10 as any]; const { q }: { q: number } = { q: 11 as any }; return [p, q]
