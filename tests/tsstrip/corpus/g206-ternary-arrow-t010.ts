const c = 1; const f = c ? (x: `prefix-${string}`): `prefix-${string}` => x : (y: any) => y; return f(5 as any)
