const k = "z"; const a = [10, 20]; class A { x = a
private [k] = 1 } return Object.entries(new A())
