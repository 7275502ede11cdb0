let n = 1
type A = readonly string[]
interface I { p: readonly string[]; m(x: readonly string[]): readonly string[] }
(() => { n = 6 })()
return n
