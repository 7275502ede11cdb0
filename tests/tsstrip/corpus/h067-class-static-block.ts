class C { static x: number; static { C.x = 42 } } return C.x
