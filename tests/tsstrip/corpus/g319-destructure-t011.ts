const [p]: (a: number, b?: string) => void[] = [10 as any]; const { q }: { q: (a: number, b?: string) => void } = { q: 11 as any }; return [p, q]
