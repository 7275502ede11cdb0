class A { ; ; x: number = 1; ; } return new A().x
