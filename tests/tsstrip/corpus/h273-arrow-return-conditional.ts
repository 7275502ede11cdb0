const f = <T,>(x: T): T extends string ? 1 : 2 => (typeof x === "string" ? 1 : 2) as any; return f("a")
