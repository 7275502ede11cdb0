const a = [9, 8]; let x = a as number[]
[0, 1].forEach((i) => { x = [i] })
return x
