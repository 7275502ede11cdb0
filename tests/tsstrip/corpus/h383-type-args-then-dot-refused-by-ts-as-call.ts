class A { static x = 1 } return A.x
