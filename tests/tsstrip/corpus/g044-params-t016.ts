function f(a: { [K in "a" | "b"]: K }, b?: { [K in "a" | "b"]: K }): { [K in "a" | "b"]: K } { return [a, b] as any } return f(1 as any)
