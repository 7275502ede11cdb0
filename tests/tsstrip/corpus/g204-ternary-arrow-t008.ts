const c = 1; const f = c ? (x: number | string | null): number | string | null => x : (y: any) => y; return f(5 as any)
