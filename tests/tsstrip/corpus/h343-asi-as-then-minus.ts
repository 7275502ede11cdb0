let a = 5
let x = a as number
-1
return x
