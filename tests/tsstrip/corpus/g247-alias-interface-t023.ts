let n = 1
type A = { (x: number): string; new (x: string): object; m?(): void }
interface I { p: { (x: number): string; new (x: string): object; m?(): void }; m(x: { (x: number): string; new (x: string): object; m?(): void }): { (x: number): string; new (x: string): object; m?(): void } }
(() => { n = 6 })()
return n
