const c = 1; const f = c ? (x: "lit" | 'other' | 42 | -1 | true): "lit" | 'other' | 42 | -1 | true => x : (y: any) => y; return f(5 as any)
