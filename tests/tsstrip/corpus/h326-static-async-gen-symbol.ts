class A { static async *[Symbol.asyncIterator](): AsyncGenerator<number> { yield 1 } } const r: number[] = []; for await (const v of A as any) r.push(v); return r
