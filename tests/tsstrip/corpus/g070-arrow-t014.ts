const f = (a: keyof typeof globalThis): keyof typeof globalThis => a; return f(2 as any)
