return Math.max(1 as number, 2 as any, (3 as number))
