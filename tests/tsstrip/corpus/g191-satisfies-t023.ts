const v = [1, 2] satisfies { (x: number): string; new (x: string): object; m?(): void }; return v
