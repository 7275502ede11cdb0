const f = (a: number | string | null): number | string | null => a; return f(2 as any)
