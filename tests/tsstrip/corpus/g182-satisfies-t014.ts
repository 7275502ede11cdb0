const v = [1, 2] satisfies keyof typeof globalThis; return v
