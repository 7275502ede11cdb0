const c = 1; const f = c ? (x: Array<number>): Array<number> => x : (y: any) => y; return f(5 as any)
