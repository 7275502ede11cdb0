const f = (a: (a: number, b?: string) => void): (a: number, b?: string) => void => a; return f(2 as any)
