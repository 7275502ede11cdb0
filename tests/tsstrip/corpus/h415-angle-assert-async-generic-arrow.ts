const f = async <T>(x: T): Promise<T> => x; return await f(<number>4)
