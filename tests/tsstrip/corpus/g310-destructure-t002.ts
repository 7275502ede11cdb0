const [p]: Array<number>[] = [10 as any]; const { q }: { q: Array<number> } = { q: 11 as any }; return [p, q]
