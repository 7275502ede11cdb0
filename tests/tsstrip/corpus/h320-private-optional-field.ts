class A { #x?: number; get() { return this.#x } } return new A().get()
