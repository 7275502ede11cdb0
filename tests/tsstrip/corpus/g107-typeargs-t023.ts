const f = <U,>(a: U): U => a; return f<{ (x: number): string; new (x: string): object; m?(): void }>(3 as any)
