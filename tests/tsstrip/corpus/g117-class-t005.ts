class C { x: { readonly [k: string]: number } = 1 as any; m(a: { readonly [k: string]: number }): { readonly [k: string]: number } { return a } } return [new C().x, new C().m(4 as any)]
