let s = "x"
declare const q: number
`t`
return s
