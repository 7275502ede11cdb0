// Float64Array
const v = new Float64Array([NaN, -0]);
const r = await echo.f(v);
const checks = [r[0] instanceof Float64Array,
  r[0].length === 2,
  r[0].join() === "NaN,0"];
return { checks, wire: v };
