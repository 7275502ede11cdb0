let n = 1
type A = number | string | null
interface I { p: number | string | null; m(x: number | string | null): number | string | null }
(() => { n = 6 })()
return n
