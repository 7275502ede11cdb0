let x: string[] = 5 as any; return x
