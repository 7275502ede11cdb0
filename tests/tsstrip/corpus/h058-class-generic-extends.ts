class Base<T> { constructor(public_v: T) { this.v = public_v } v: T }
class D<T extends object, U = string> extends Base<T> implements Iterable<U> { *[Symbol.iterator](): Iterator<U> {} }
return new D({ a: 1 }).v
