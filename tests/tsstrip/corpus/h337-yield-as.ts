function* g(): Generator<number, number, number> { const x = (yield 1) as number; return x } const it = g(); it.next(); return it.next(7).value
