let x: import("./mod").T<string> = 5 as any; return x
