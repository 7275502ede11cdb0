return (7 as [first: number, second?: string]) as any
