const c = 1; const f = c ? (x: { (x: number): string; new (x: string): object; m?(): void }): { (x: number): string; new (x: string): object; m?(): void } => x : (y: any) => y; return f(5 as any)
