let x: "lit" | 'other' | 42 | -1 | true = 5 as any; return x
