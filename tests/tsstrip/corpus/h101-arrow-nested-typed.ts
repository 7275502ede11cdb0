const f = (a: number) => (b: number): number => a * b; return f(2)(3)
