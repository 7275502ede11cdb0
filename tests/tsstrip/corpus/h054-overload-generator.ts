function* g(): Generator<number>;
function* g() { yield 1; yield 2 }
return [...g()]
