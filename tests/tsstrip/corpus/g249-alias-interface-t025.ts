let n = 1
type A = Promise<void> | undefined
interface I { p: Promise<void> | undefined; m(x: Promise<void> | undefined): Promise<void> | undefined }
(() => { n = 6 })()
return n
