return (7 as new (x: number) => object) as any
