const [p]: number | string | null[] = [10 as any]; const { q }: { q: number | string | null } = { q: 11 as any }; return [p, q]
