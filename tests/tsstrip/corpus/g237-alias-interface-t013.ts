let n = 1
type A = <U>(x: U) => U
interface I { p: <U>(x: U) => U; m(x: <U>(x: U) => U): <U>(x: U) => U }
(() => { n = 6 })()
return n
