const [p]: <U>(x: U) => U[] = [10 as any]; const { q }: { q: <U>(x: U) => U } = { q: 11 as any }; return [p, q]
