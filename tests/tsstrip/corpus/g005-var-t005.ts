let x: { readonly [k: string]: number } = 5 as any; return x
