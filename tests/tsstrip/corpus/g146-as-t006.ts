return (7 as [number, string?, ...boolean[]]) as any
