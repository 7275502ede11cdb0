const c = 1; const f = c ? (x: <U>(x: U) => U): <U>(x: U) => U => x : (y: any) => y; return f(5 as any)
