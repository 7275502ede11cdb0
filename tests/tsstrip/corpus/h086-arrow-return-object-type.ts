const f = (): { a: number } => ({ a: 1 }); return f()
