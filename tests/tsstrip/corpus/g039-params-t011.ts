function f(a: (a: number, b?: string) => void, b?: (a: number, b?: string) => void): (a: number, b?: string) => void { return [a, b] as any } return f(1 as any)
