const c = 1; const f = c ? (x: (string | number)[]): (string | number)[] => x : (y: any) => y; return f(5 as any)
