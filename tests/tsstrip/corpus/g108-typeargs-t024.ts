const f = <U,>(a: U): U => a; return f<import("./mod").T<string>>(3 as any)
