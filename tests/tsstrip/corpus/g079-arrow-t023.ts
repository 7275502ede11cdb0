const f = (a: { (x: number): string; new (x: string): object; m?(): void }): { (x: number): string; new (x: string): object; m?(): void } => a; return f(2 as any)
