let n = 1
type A = any[][]
interface I { p: any[][]; m(x: any[][]): any[][] }
(() => { n = 6 })()
return n
