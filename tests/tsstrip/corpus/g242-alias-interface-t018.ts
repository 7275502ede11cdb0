let n = 1
type A = object & { x: 1 }
interface I { p: object & { x: 1 }; m(x: object & { x: 1 }): object & { x: 1 } }
(() => { n = 6 })()
return n
