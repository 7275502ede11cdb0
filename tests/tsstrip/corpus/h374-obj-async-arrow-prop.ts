const o = { a: async <T,>(x: T): Promise<T> => x }; return await o.a(1)
