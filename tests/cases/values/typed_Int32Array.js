// Int32Array
const v = new Int32Array([-3]);
const r = await echo.f(v);
const checks = [r[0] instanceof Int32Array,
  r[0].length === 1,
  r[0].join() === "-3"];
return { checks, wire: v };
