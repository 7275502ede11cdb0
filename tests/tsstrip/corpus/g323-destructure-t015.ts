const [p]: ReturnType<typeof parseInt>[] = [10 as any]; const { q }: { q: ReturnType<typeof parseInt> } = { q: 11 as any }; return [p, q]
