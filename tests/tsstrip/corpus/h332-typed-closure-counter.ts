function counter(): { inc(): number; readonly value: number } { let n = 0; return { inc: () => ++n, get value() { return n } } } const c = counter(); c.inc(); c.inc(); return c.value
