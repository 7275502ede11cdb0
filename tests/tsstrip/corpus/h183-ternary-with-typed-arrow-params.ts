const c = 0; const f = c ? (a?: number) => a : (b?: string): string => b ?? "d"; return (f as any)()
