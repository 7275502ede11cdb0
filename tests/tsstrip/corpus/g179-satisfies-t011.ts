const v = [1, 2] satisfies (a: number, b?: string) => void; return v
