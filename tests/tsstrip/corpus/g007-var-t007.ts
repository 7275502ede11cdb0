let x: [first: number, second?: string] = 5 as any; return x
