const [p]: import("./mod").T<string>[] = [10 as any]; const { q }: { q: import("./mod").T<string> } = { q: 11 as any }; return [p, q]
