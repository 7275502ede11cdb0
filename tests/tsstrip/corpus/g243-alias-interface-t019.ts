let n = 1
type A = (string | number)[]
interface I { p: (string | number)[]; m(x: (string | number)[]): (string | number)[] }
(() => { n = 6 })()
return n
