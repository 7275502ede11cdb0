const o = { async run<T>(x: T): Promise<T> { return x } }; return await o.run<number>(9)
