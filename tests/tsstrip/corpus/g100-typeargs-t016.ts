const f = <U,>(a: U): U => a; return f<{ [K in "a" | "b"]: K }>(3 as any)
