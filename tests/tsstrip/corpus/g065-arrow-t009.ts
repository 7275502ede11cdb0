const f = (a: "lit" | 'other' | 42 | -1 | true): "lit" | 'other' | 42 | -1 | true => a; return f(2 as any)
