const [p]: object & { x: 1 }[] = [10 as any]; const { q }: { q: object & { x: 1 } } = { q: 11 as any }; return [p, q]
