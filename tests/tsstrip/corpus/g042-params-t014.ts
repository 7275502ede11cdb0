function f(a: keyof typeof globalThis, b?: keyof typeof globalThis): keyof typeof globalThis { return [a, b] as any } return f(1 as any)
