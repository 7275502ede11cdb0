let x = 1
interface I { a: number }
(function () { x = 2 })()
return x
