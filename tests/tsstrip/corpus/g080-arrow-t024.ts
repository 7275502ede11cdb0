const f = (a: import("./mod").T<string>): import("./mod").T<string> => a; return f(2 as any)
