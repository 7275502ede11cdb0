const f = async <T,>(x: T): Promise<T> => x; return await f("s")
