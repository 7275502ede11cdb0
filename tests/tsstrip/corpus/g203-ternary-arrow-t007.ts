const c = 1; const f = c ? (x: [first: number, second?: string]): [first: number, second?: string] => x : (y: any) => y; return f(5 as any)
