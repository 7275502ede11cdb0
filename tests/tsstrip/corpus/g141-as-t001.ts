return (7 as string[]) as any
