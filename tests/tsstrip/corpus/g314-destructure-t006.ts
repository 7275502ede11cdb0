const [p]: [number, string?, ...boolean[]][] = [10 as any]; const { q }: { q: [number, string?, ...boolean[]] } = { q: 11 as any }; return [p, q]
