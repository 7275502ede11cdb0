const o: Record<string, (x: number) => number> = { f: (x) => x }; return o["f"]!(2)
