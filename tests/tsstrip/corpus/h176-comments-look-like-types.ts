/* let x: number; interface A {} */
// type B = string
return 1 /* as any */
