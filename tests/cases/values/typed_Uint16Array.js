// Uint16Array
const v = new Uint16Array([65535]);
const r = await echo.f(v);
const checks = [r[0] instanceof Uint16Array,
  r[0].length === 1,
  r[0].join() === "65535"];
return { checks, wire: v };
