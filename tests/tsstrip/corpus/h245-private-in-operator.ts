class A { #x = 1; static is(o: unknown): boolean { return #x in (o as object) } } return [A.is(new A()), A.is({})]
