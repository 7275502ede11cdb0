class A { protected constructor(x: number) { this.x = x } x: number; static make(): A { return new A(1) } } return A.make().x
