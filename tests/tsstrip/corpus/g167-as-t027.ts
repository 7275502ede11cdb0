return (7 as () => () => void) as any
