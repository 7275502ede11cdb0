function check(c: unknown): asserts c is number { if (typeof c !== "number") throw new TypeError("nan") } check(1); return "ok"
