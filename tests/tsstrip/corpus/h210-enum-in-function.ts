// @refuse: enum
// @transform
function f() { enum L { X = 5 } return L.X }
return f()
