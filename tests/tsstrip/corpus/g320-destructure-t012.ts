const [p]: new (x: number) => object[] = [10 as any]; const { q }: { q: new (x: number) => object } = { q: 11 as any }; return [p, q]
