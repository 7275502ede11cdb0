class A { isB(): this is B { return this instanceof B } } class B extends A {} return [new A().isB(), new B().isB()]
