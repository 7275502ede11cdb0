const p = Promise.resolve(3); const v = await p as number + 1; return v
