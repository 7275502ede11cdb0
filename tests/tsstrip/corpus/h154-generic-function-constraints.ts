function get<T, K extends keyof T>(o: T, k: K): T[K] { return o[k] } return get({ a: 1, b: "x" }, "b")
