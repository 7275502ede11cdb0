return (7 as <U>(x: U) => U) as any
