let x = 1 as any
;(function () { x = 2 })()
return x
