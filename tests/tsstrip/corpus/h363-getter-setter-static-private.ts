class A { static #n = 0; static get n(): number { return A.#n } } return A.n
