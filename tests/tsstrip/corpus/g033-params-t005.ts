function f(a: { readonly [k: string]: number }, b?: { readonly [k: string]: number }): { readonly [k: string]: number } { return [a, b] as any } return f(1 as any)
