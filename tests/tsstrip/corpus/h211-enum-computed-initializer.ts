// @refuse: enum
// @transform
const base = 3;
enum K { A = base * 2, B = "x".length }
return [K.A, K.B]
