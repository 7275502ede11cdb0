let n = 1
type A = () => () => void
interface I { p: () => () => void; m(x: () => () => void): () => () => void }
(() => { n = 6 })()
return n
