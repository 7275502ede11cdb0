function f(a: Promise<void> | undefined, b?: Promise<void> | undefined): Promise<void> | undefined { return [a, b] as any } return f(1 as any)
