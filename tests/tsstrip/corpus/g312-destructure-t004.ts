const [p]: { a: number; b?: string }[] = [10 as any]; const { q }: { q: { a: number; b?: string } } = { q: 11 as any }; return [p, q]
