class B { v = 1 } class A extends (B as any) {} return new A().v
