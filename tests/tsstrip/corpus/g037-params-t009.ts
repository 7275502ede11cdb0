function f(a: "lit" | 'other' | 42 | -1 | true, b?: "lit" | 'other' | 42 | -1 | true): "lit" | 'other' | 42 | -1 | true { return [a, b] as any } return f(1 as any)
