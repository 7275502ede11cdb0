let n = 1
type A = "lit" | 'other' | 42 | -1 | true
interface I { p: "lit" | 'other' | 42 | -1 | true; m(x: "lit" | 'other' | 42 | -1 | true): "lit" | 'other' | 42 | -1 | true }
(() => { n = 6 })()
return n
