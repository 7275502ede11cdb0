class A { declare() { return 1 } } return new A().declare()
