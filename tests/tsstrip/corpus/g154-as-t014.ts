return (7 as keyof typeof globalThis) as any
