class B<T> { t?: T } function id<T>(x: T): T { return x } class C extends id<typeof B>(B)<number> { } return new C() instanceof B
