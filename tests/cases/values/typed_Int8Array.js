// Int8Array
const v = new Int8Array([-1, 127]);
const r = await echo.f(v);
const checks = [r[0] instanceof Int8Array,
  r[0].length === 2,
  r[0].join() === "-1,127"];
return { checks, wire: v };
