let n = 1
type A = import("./mod").T<string>
interface I { p: import("./mod").T<string>; m(x: import("./mod").T<string>): import("./mod").T<string> }
(() => { n = 6 })()
return n
