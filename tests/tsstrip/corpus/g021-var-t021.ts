let x: unknown = 5 as any; return x
