const c = 1; const f = c ? (x: ReturnType<typeof parseInt>): ReturnType<typeof parseInt> => x : (y: any) => y; return f(5 as any)
