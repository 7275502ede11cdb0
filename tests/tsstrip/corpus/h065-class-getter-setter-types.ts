class T { #v: number = 0; get v(): number { return this.#v } set v(x: number) { this.#v = x * 2 } static get s(): string { return "s" } } const t = new T(); t.v = 4; return [t.v, T.s]
