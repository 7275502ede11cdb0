// BigInt64Array
const v = new BigInt64Array([-1n]);
const r = await echo.f(v);
const checks = [r[0] instanceof BigInt64Array,
  r[0].length === 1,
  r[0].join() === "-1"];
return { checks, wire: v };
