return (7 as { a: number; b?: string }) as any
