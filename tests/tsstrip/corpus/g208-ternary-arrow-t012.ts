const c = 1; const f = c ? (x: new (x: number) => object): new (x: number) => object => x : (y: any) => y; return f(5 as any)
