const [p]: "lit" | 'other' | 42 | -1 | true[] = [10 as any]; const { q }: { q: "lit" | 'other' | 42 | -1 | true } = { q: 11 as any }; return [p, q]
