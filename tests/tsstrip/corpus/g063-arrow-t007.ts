const f = (a: [first: number, second?: string]): [first: number, second?: string] => a; return f(2 as any)
