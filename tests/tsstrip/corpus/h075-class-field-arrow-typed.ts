class A { n = 2; f = (x: number): number => x * this.n } return new A().f(5)
