const [p]: () => () => void[] = [10 as any]; const { q }: { q: () => () => void } = { q: 11 as any }; return [p, q]
