return (7 as readonly string[]) as any
