function f(x: number): "a" | "b" | { c: number } | [number, string] | null { return null } return f(1)
