const a: { b?: number } | null = null; return a?.b ?? -1
