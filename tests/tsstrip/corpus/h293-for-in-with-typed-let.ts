const o = { a: 1, b: 2 }; let ks: string[] = []; for (let k in o as object) ks.push(k); return ks
