let n = 1
type A = typeof Math.max
interface I { p: typeof Math.max; m(x: typeof Math.max): typeof Math.max }
(() => { n = 6 })()
return n
