return (7 as any[][]) as any
