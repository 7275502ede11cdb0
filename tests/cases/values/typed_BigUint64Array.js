// BigUint64Array
const v = new BigUint64Array([2n ** 64n - 1n]);
const r = await echo.f(v);
const checks = [r[0] instanceof BigUint64Array,
  r[0].length === 1,
  r[0].join() === "18446744073709551615"];
return { checks, wire: v };
