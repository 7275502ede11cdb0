let a = 5, b = 1
let x = a as number
++b
return [x, b]
