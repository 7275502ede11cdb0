const [p]: string[][] = [10 as any]; const { q }: { q: string[] } = { q: 11 as any }; return [p, q]
