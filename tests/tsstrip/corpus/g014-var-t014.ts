let x: keyof typeof globalThis = 5 as any; return x
