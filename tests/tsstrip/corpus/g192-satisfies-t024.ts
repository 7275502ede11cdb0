const v = [1, 2] satisfies import("./mod").T<string>; return v
