let n = 1
type A = Map<string, Array<Set<number>>>
interface I { p: Map<string, Array<Set<number>>>; m(x: Map<string, Array<Set<number>>>): Map<string, Array<Set<number>>> }
(() => { n = 6 })()
return n
