return (7 as (a: number, b?: string) => void) as any
