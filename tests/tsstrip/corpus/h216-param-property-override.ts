// @refuse: parameter property
// @transform
class A { v = 1 }
class B extends A { constructor(public override v: number) { super() } }
return new B(7).v
