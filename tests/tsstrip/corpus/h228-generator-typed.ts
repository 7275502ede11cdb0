function* g(n: number): Generator<number, string, undefined> { for (let i = 0; i < n; i++) yield i as number; return "done" } return [...g(3)]
