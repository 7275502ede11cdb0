// Float32Array
const v = new Float32Array([1.5]);
const r = await echo.f(v);
const checks = [r[0] instanceof Float32Array,
  r[0].length === 1,
  r[0].join() === "1.5"];
return { checks, wire: v };
