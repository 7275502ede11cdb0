function g<U extends { (x: number): string; new (x: string): object; m?(): void } = { (x: number): string; new (x: string): object; m?(): void }>(x: U) { return x } return g(9 as any)
