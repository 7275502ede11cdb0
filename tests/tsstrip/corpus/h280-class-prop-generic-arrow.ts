class A { h = <T,>(e: T): T => e } return new A().h(3)
