const o = { n: 1 }; let r = o!; r!.n++; return o.n
