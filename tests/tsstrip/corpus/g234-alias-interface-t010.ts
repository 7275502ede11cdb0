let n = 1
type A = `prefix-${string}`
interface I { p: `prefix-${string}`; m(x: `prefix-${string}`): `prefix-${string}` }
(() => { n = 6 })()
return n
