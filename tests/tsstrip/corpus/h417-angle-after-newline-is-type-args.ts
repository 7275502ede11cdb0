let a: any = 1
let b = a
<number>a
return b
