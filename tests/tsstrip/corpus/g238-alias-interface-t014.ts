let n = 1
type A = keyof typeof globalThis
interface I { p: keyof typeof globalThis; m(x: keyof typeof globalThis): keyof typeof globalThis }
(() => { n = 6 })()
return n
