return (7 as Promise<void> | undefined) as any
