let n = 1
type A = { readonly [k: string]: number }
interface I { p: { readonly [k: string]: number }; m(x: { readonly [k: string]: number }): { readonly [k: string]: number } }
(() => { n = 6 })()
return n
