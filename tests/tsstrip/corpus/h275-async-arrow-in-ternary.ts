const c = true; const f = c ? async (x: number): Promise<number> => x : null; return await f!(2)
