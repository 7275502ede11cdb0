let n = 1
type A = ReturnType<typeof parseInt>
interface I { p: ReturnType<typeof parseInt>; m(x: ReturnType<typeof parseInt>): ReturnType<typeof parseInt> }
(() => { n = 6 })()
return n
