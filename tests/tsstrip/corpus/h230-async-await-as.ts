const p: Promise<number> = Promise.resolve(2); return (await p as number) + (await (p as Promise<number>))
