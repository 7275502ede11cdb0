class A { private static _n: number = 0; static get n(): number { return A._n } static set n(v: number) { A._n = v } } A.n = 3; return A.n
