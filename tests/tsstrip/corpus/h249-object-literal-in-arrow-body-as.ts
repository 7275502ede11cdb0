const f = () => ({ a: 1 } as { a: number }); return f().a
