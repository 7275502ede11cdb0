let n = 1
type A = (a: number, b?: string) => void
interface I { p: (a: number, b?: string) => void; m(x: (a: number, b?: string) => void): (a: number, b?: string) => void }
(() => { n = 6 })()
return n
