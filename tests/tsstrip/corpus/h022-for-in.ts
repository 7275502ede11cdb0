const o: Record<string, number> = { a: 1, b: 2 }; const k: string[] = []; for (const key in o) k.push(key); return k
