const [p]: keyof typeof globalThis[] = [10 as any]; const { q }: { q: keyof typeof globalThis } = { q: 11 as any }; return [p, q]
