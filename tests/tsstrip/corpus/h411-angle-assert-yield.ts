function* g() { yield <number>1; yield <any>"b" } return [...g()]
