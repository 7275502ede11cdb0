declare function f(a: number): void; return typeof f
