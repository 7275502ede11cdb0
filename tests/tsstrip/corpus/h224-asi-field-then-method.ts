class A { x: number
 m() { return 1 } } return new A().m()
