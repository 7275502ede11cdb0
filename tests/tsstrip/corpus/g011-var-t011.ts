let x: (a: number, b?: string) => void = 5 as any; return x
