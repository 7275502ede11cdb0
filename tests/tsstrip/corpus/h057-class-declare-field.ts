class A { declare x: number; y = 1 } return Object.keys(new A())
