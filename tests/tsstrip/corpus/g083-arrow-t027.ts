const f = (a: () => () => void): () => () => void => a; return f(2 as any)
