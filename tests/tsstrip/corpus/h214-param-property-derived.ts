// @refuse: parameter property
// @transform
class A { constructor(public a: number) {} }
class B extends A { constructor(public b: number) { super(b * 2) } }
const o = new B(2); return [o.a, o.b]
