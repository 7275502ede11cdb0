let x: readonly string[] = 5 as any; return x
