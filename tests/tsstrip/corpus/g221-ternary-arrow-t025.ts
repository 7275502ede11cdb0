const c = 1; const f = c ? (x: Promise<void> | undefined): Promise<void> | undefined => x : (y: any) => y; return f(5 as any)
