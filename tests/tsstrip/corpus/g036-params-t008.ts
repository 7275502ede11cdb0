function f(a: number | string | null, b?: number | string | null): number | string | null { return [a, b] as any } return f(1 as any)
