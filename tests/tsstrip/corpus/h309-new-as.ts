class B { v = 2 } return new (B as any)().v
