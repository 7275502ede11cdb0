// @refuse: enum
// @transform
enum F { A = 1, B = A << 1, C = A | B }
return [F.A, F.B, F.C]
