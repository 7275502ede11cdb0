abstract class A { constructor(); constructor(x?: number) {} } class B extends A {} return new B() instanceof A
