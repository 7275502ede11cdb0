// @refuse: enum
// @transform
enum E { A = 1, B, C = 10, D }
return [E.A, E.B, E.C, E.D, E[11]]
