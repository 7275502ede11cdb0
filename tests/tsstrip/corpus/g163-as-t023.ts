return (7 as { (x: number): string; new (x: string): object; m?(): void }) as any
