let x: { (x: number): string; new (x: string): object; m?(): void } = 5 as any; return x
