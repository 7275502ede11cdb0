let n = 1
type A = Array<number>
interface I { p: Array<number>; m(x: Array<number>): Array<number> }
(() => { n = 6 })()
return n
