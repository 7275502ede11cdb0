let n = 1
type A = [first: number, second?: string]
interface I { p: [first: number, second?: string]; m(x: [first: number, second?: string]): [first: number, second?: string] }
(() => { n = 6 })()
return n
