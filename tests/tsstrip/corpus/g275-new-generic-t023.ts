const m = new Map<string, { (x: number): string; new (x: string): object; m?(): void }>(); m.set("a", 8 as any); return [...m]
