const o = { a: 1 }; let p: typeof o = { a: 2 }; let q: typeof o.a = 3; return p.a + q
