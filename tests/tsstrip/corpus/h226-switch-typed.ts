function f(x: "a" | "b"): number { switch (x) { case "a": return 1; default: { const y: number = 2; return y } } } return [f("a"), f("b")]
