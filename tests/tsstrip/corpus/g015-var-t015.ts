let x: ReturnType<typeof parseInt> = 5 as any; return x
