return (7 as object & { x: 1 }) as any
