// Uint8Array
const v = new Uint8Array([1, 2]);
const r = await echo.f(v);
const checks = [r[0] instanceof Uint8Array,
  r[0].length === 2,
  r[0].join() === "1,2"];
return { checks, wire: v };
