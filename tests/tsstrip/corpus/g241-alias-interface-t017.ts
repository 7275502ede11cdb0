let n = 1
type A = Partial<Record<string, unknown>>
interface I { p: Partial<Record<string, unknown>>; m(x: Partial<Record<string, unknown>>): Partial<Record<string, unknown>> }
(() => { n = 6 })()
return n
