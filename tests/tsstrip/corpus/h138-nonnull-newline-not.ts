let a = 1
let b = a
!0
return b
