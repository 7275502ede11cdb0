const c = 1; const f = c ? (x: any[][]): any[][] => x : (y: any) => y; return f(5 as any)
