const c = 1; const f = c ? (x: keyof typeof globalThis): keyof typeof globalThis => x : (y: any) => y; return f(5 as any)
