function f(): [number, string] { return [1, "a"] } const [a, b] = f(); return a + b
