const c = 1; const f = c ? (x: typeof Math.max): typeof Math.max => x : (y: any) => y; return f(5 as any)
