let n = 1
type A = { a: number; b?: string }
interface I { p: { a: number; b?: string }; m(x: { a: number; b?: string }): { a: number; b?: string } }
(() => { n = 6 })()
return n
