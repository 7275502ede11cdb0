let n = 1
type A = new (x: number) => object
interface I { p: new (x: number) => object; m(x: new (x: number) => object): new (x: number) => object }
(() => { n = 6 })()
return n
