return (7 as { readonly [k: string]: number }) as any
