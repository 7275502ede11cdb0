class C { x: keyof typeof globalThis = 1 as any; m(a: keyof typeof globalThis): keyof typeof globalThis { return a } } return [new C().x, new C().m(4 as any)]
