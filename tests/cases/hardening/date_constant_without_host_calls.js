// The guest clock does not move while the guest computes without host calls.
const a = Date.now();
const d = new Date();
let x = 0;
for (let i = 0; i < 2000000; i++) x += i;
const b = Date.now();
return [a === b, d.getTime() === a, new Date().getTime() === a, typeof a === "number", a > 0];
