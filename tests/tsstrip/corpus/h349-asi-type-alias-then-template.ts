let s = "a"
type T = number
`x`
return s
