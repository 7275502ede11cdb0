const f: any = (x: any) => 1; const g = () => 2
let r = f!
(g)
return r
