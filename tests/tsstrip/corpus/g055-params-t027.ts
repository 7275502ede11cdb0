function f(a: () => () => void, b?: () => () => void): () => () => void { return [a, b] as any } return f(1 as any)
