let n = 1
type A = { [K in "a" | "b"]: K }
interface I { p: { [K in "a" | "b"]: K }; m(x: { [K in "a" | "b"]: K }): { [K in "a" | "b"]: K } }
(() => { n = 6 })()
return n
