const c = 1; const f = c ? (x: () => () => void): () => () => void => x : (y: any) => y; return f(5 as any)
