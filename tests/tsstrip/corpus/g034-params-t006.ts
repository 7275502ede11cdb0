function f(a: [number, string?, ...boolean[]], b?: [number, string?, ...boolean[]]): [number, string?, ...boolean[]] { return [a, b] as any } return f(1 as any)
