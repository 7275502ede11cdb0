return (7 as Map<string, Array<Set<number>>>) as any
