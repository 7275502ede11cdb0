// Error name, message and cause
const v = new TypeError("m"); v.cause = { why: 5 };
const r = await echo.f(v);
const checks = [r[0] instanceof TypeError,
  r[0].name === "TypeError",
  r[0].message === "m",
  r[0].cause.why === 5];
return { checks, wire: v };
