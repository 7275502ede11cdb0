const v = await Promise.resolve<number>(7); return v
