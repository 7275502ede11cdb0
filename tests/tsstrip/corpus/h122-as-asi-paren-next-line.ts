let y = 0; let x = 1 as number
(function () { y = 1 })()
return [x, y]
