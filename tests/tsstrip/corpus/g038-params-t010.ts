function f(a: `prefix-${string}`, b?: `prefix-${string}`): `prefix-${string}` { return [a, b] as any } return f(1 as any)
