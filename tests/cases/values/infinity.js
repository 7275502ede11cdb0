// +Infinity and -Infinity
const v = [Infinity, -Infinity];
const r = await echo.f(v);
const checks = [r[0][0] === Infinity,
  r[0][1] === -Infinity];
return { checks, wire: v };
