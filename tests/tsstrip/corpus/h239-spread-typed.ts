const a: number[] = [1, 2]; const b = [...a as number[], ...(a as any)]; return b
