const c = 1; const f = c ? (x: { readonly [k: string]: number }): { readonly [k: string]: number } => x : (y: any) => y; return f(5 as any)
