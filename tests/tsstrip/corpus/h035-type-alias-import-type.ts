type M = typeof import("node:fs"); type N = import("./x").Y<string>; return "t"
