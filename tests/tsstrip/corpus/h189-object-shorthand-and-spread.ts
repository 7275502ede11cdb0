const a = 1, b = { c: 2 }; const o = { a, ...b, ["k" + a]: a as number }; return o
