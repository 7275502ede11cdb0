const [p]: [first: number, second?: string][] = [10 as any]; const { q }: { q: [first: number, second?: string] } = { q: 11 as any }; return [p, q]
