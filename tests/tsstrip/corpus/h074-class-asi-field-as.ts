const a = [1, 2]; class A { x = a as any
[0] = 5 } return Object.keys(new A())
