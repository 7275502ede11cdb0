const f = (a: string[]): string[] => a; return f(2 as any)
