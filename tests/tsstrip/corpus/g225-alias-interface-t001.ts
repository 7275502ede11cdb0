let n = 1
type A = string[]
interface I { p: string[]; m(x: string[]): string[] }
(() => { n = 6 })()
return n
