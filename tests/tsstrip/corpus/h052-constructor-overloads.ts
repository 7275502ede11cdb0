class A { v: number; constructor(); constructor(x: number); constructor(x?: number) { this.v = x ?? 0 } } return [new A().v, new A(3).v]
