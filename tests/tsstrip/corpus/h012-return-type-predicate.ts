function isStr(x: unknown): x is string { return typeof x === "string" } return [isStr("a"), isStr(1)]
