const c = 1; const f = c ? (x: Partial<Record<string, unknown>>): Partial<Record<string, unknown>> => x : (y: any) => y; return f(5 as any)
