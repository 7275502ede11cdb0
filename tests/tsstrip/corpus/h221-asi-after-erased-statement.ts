let a = 1
interface A {}
[1, 2].forEach(() => a++)
return a
