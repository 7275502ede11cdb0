const [p]: any[][][] = [10 as any]; const { q }: { q: any[][] } = { q: 11 as any }; return [p, q]
