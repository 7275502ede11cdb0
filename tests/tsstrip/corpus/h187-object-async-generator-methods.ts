const o = { async a(): Promise<number> { return 1 }, *g(): Generator<number> { yield 2 }, async *ag() { yield 3 } }; return [await o.a(), ...o.g()]
