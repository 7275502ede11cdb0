let x: Partial<Record<string, unknown>> = 5 as any; return x
