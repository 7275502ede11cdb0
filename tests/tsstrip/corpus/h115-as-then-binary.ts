const x: unknown = 4; return (x as number) * 2 + (x as number)
