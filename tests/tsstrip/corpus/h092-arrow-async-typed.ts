const f = async (x: number): Promise<number> => x * 2; return await f(4)
