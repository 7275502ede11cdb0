const f = (a: `prefix-${string}`): `prefix-${string}` => a; return f(2 as any)
