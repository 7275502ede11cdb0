let x: Promise<void> | undefined = 5 as any; return x
