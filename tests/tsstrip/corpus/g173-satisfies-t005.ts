const v = [1, 2] satisfies { readonly [k: string]: number }; return v
