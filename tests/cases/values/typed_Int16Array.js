// Int16Array
const v = new Int16Array([-2]);
const r = await echo.f(v);
const checks = [r[0] instanceof Int16Array,
  r[0].length === 1,
  r[0].join() === "-2"];
return { checks, wire: v };
