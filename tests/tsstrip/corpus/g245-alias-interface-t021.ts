let n = 1
type A = unknown
interface I { p: unknown; m(x: unknown): unknown }
(() => { n = 6 })()
return n
