class A { [Symbol.toPrimitive](hint: string): number { return 7 } } return +new A()
