let n = 1
type A = number
interface I { p: number; m(x: number): number }
(() => { n = 6 })()
return n
