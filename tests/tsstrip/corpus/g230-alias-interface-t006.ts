let n = 1
type A = [number, string?, ...boolean[]]
interface I { p: [number, string?, ...boolean[]]; m(x: [number, string?, ...boolean[]]): [number, string?, ...boolean[]] }
(() => { n = 6 })()
return n
