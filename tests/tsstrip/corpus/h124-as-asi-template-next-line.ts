const f = (s: any) => "tag"; let x = f as any
`tpl`
return x === f
