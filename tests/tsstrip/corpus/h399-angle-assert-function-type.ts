const f: unknown = (n: number) => n * 3; return (<(n: number) => number>f)(2)
