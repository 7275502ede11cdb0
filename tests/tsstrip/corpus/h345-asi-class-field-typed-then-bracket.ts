const k = "y"; class A { x: number
[k] = 2 } return Object.keys(new A())
