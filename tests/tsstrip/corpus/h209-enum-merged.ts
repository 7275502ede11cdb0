// @refuse: enum
// @transform
enum E { A }
enum E { B = 2 }
return [E.A, E.B]
