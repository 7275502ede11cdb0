const [p]: Map<string, Array<Set<number>>>[] = [10 as any]; const { q }: { q: Map<string, Array<Set<number>>> } = { q: 11 as any }; return [p, q]
