const f = (a: { readonly [k: string]: number }): { readonly [k: string]: number } => a; return f(2 as any)
