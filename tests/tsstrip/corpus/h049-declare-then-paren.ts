let x = 1
declare const y: number
(function () { x = 9 })()
return x
