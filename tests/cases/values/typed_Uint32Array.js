// Uint32Array
const v = new Uint32Array([4294967295]);
const r = await echo.f(v);
const checks = [r[0] instanceof Uint32Array,
  r[0].length === 1,
  r[0].join() === "4294967295"];
return { checks, wire: v };
