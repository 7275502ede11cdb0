const x: unknown = "abc"; return typeof x === "string" ? (x as string).length : 0
