const [p]: { readonly [k: string]: number }[] = [10 as any]; const { q }: { q: { readonly [k: string]: number } } = { q: 11 as any }; return [p, q]
