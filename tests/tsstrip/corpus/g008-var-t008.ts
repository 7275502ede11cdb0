let x: number | string | null = 5 as any; return x
