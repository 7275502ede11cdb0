const g = (cb: ((e: Error) => void) | null): number => cb ? 1 : 0; return g(null)
