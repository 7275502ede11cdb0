class A { v = 0; inc(): this { this.v++; return this } } return new A().inc().inc().v
