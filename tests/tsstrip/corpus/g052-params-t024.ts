function f(a: import("./mod").T<string>, b?: import("./mod").T<string>): import("./mod").T<string> { return [a, b] as any } return f(1 as any)
