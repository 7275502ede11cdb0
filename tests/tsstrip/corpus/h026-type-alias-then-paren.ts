let x = 1
type A = string
(function () { x = 5 })()
return x
