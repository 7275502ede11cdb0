function* g(): Generator<any> { yield /a<b>/g; yield 1 / 2 } return [...g()].map(String)
