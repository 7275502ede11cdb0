// @refuse: enum
// @transform
const enum D { N = 1, S = 2 }
return D.N + D.S
