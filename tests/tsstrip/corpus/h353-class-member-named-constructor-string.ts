class A { "constructor"(x: number) { this.v = x } v: number } return new A(3).v
